"""The command line: the one place that prints, catches ToolbenchError and picks the exit code
(main), one module per command group.

May import: anything"""
