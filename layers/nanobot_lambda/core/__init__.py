"""The domain: what the assistant is and does, with no cloud, HTTP or model client.

Everything outside is reached through the ports (`ports.py`) and fails as one of the errors in
`errors.py`. `make lint` checks that nothing here imports an adapter or a library client.
"""
