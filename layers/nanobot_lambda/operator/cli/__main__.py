"""`python -m nanobot_lambda.operator.cli`, the same as the `nanobot-lambda` script."""

import sys

from nanobot_lambda.operator.cli import main

sys.exit(main())
