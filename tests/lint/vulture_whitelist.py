# ruff: noqa: B018  (each line is a bare name on purpose: vulture reads it as a use)
"""What ``make lint``'s dead-code check (vulture) would call unused, and is not: methods and functions that
frameworks call by name. Nothing imports this file; vulture reads each line as a use of the name.
A new entry needs the framework that calls it."""
_ = None

_.on_train_begin  # Keras calls a callback's hooks (capture/callbacks.py)
_.on_train_batch_begin
_.on_train_batch_end
_.on_train_end
_.print_help  # argparse calls it for -h (commands/command_registry.py)
_.repr_int  # reprlib.Repr dispatches on the type's name (formats/ge_json_codec.py)
_.__getattr__  # a module's lazy attributes (PEP 562: config.py, dump_schema.py, tf_config.py)
