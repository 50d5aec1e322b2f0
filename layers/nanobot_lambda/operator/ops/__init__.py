"""What the operator's commands do (`nanobot-lambda …`), apart from parsing and printing.

Each module works on a deployed stack (or a local moto one) through boto3 and the Bot API;
`nanobot_lambda.operator.cli` wires them to the command line.
"""
