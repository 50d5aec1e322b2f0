"""The core's ports implemented on real technology, one folder each (aws, llm, telegram, web);
each maps its library's failures into `core.errors`."""
