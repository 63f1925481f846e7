"""(being written)"""


class MpiTests:
    """Mixin of distro.PairTest."""
