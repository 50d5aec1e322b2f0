"""The operator's tooling, never deployed (the layer build leaves this folder out): the
`nanobot-lambda` command line (cli/), what its commands do on AWS (ops/), and the whole stack
on one machine (local/)."""
