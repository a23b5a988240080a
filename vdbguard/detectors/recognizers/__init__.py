"""vdbguard's Presidio recognizers, one class per module, as Presidio's ``predefined_recognizers`` are.

Each module imports ``presidio_analyzer``, so only the engine (``vdbguard.detectors.presidio``) imports them, through
``registry``, once it builds an analyzer; constants the engine needs before that live in ``detectors.entities``.
"""
