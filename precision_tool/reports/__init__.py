"""Reports: plain data (:mod:`.report`) and the one formatter (:mod:`.format`)."""
