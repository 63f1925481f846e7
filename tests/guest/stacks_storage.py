"""(being written)"""


class StorageTests:
    """Mixin of distro.PairTest."""
