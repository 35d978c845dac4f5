"""Looking at a program and the machine it runs on: ``pa.show`` (show.py,
Graphviz through dotgraph.py), ``prog.profile`` (profiling.py, compared with
the measured peaks of hardware.py, plotted by roofline.py) and
``pa.print_environment_info`` (environment.py).

The modules sit at different layers (environment.py asks ``program`` for
the default target; dotgraph.py and roofline.py import nothing above the
IR), so this package imports none of them: ``.importlinter`` places each.
"""
