"""The daemon (``memoryd run``), one module per job (docs/service.md lists them); importing this
package imports nothing, so ``memoryd status`` reads :mod:`memoryd.timerules` and
:mod:`memoryd.locks` without it.
"""
