"""`python -m nanobot_lambda.cli`, the same as the `nanobot-lambda` script."""

import sys

from nanobot_lambda.cli import main

sys.exit(main())
