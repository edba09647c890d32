"""precision_tool: an accuracy debugger for TensorFlow models moved to Ascend NPUs.

Importing the package is cheap: no TensorFlow, no format parsing. Analysis lives in
``precision_tool.formats`` -> ``alignment`` -> ``metrics`` -> ``reports`` -> ``commands`` -> ``cli``/``shell``;
``precision_tool.capture`` (the only TensorFlow user) sits off to the side.
"""
__version__ = "0.1.0"
