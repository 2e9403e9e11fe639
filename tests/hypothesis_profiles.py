"""The suite's hypothesis profiles: ``dev`` (the default) and ``ci`` (the deep run).

``HYPOTHESIS_PROFILE=ci`` (what ``.ci/run`` exports) runs every property test with the
example counts its decorator names; ``dev``, the default, a tenth of each (at least
``DEV_MINIMUM``, never more than the count named), so that the quick suite stays under a
minute on two cores. Tests name their CI count through :func:`examples`, never a bare
``max_examples=N``: an explicit count would override the profile. Kept failing inputs
(``tests/fuzz/regressions``, ``tests/bundle/regressions``) and ``@example`` cases are
replayed in every profile: they do not depend on the example count.
"""

from __future__ import annotations

import os

from hypothesis import settings

__all__ = ["CI_EXAMPLES", "DEV_MINIMUM", "PROFILE", "PROFILE_ENV", "examples"]

PROFILE_ENV = "HYPOTHESIS_PROFILE"
CI_EXAMPLES = 100
"""hypothesis's own default: what a ``@given`` without a count runs in CI."""
DEV_MINIMUM = 10

settings.register_profile("ci", max_examples=CI_EXAMPLES)
settings.register_profile("dev", max_examples=DEV_MINIMUM)

PROFILE = os.environ.get(PROFILE_ENV, "").strip() or "dev"
settings.load_profile(PROFILE)  # an unknown name raises: a typo must not pass silently


def examples(ci: int) -> int:
    """The example count for a test that runs ``ci`` examples in the ``ci`` profile: that,
    scaled by the loaded profile's share of :data:`CI_EXAMPLES` (a tenth in ``dev``), at
    least ``DEV_MINIMUM`` and at most ``ci``."""
    loaded = settings.default
    assert loaded is not None  # load_profile above
    scaled = ci * loaded.max_examples // CI_EXAMPLES
    return min(ci, max(scaled, DEV_MINIMUM))
