"""Only the optional C extension lives here (setup.cfg cannot declare one); everything else is in setup.cfg.

``precision_tool.metrics._pairstats`` sums every metric of a tensor pair in one vectorized pass (issue 17). It
needs nothing but the CPython headers -- no numpy headers, so it is independent of the numpy version -- and it is
optional: where no C compiler is found, the install goes on and the same sums are computed with numpy
(``precision_tool.metrics.pair_stats``), about three times slower.

``precision_tool._mapguard`` lets the comparison workers memory-map the files they read whole, instead of
copying them, without dying of SIGBUS when another process cuts one short meanwhile (``precision_tool.fileio``,
mapped reads). Optional too: without it the workers read.
"""
import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-fopenmp-simd", "-fno-trapping-math", "-std=c99"]
setup(ext_modules=[Extension("precision_tool.metrics._pairstats", ["precision_tool/metrics/_pairstats.c"],
                             extra_compile_args=flags, optional=True),
                   Extension("precision_tool._mapguard", ["precision_tool/_mapguard.c"],
                             extra_compile_args=[] if sys.platform == "win32" else ["-O2", "-std=c99"],
                             optional=True)])
