"""The table-driven VM suites' catalogs (rstest/select.py): every test
has one name, a path without spaces or ": " (the TAP line's detail
separator), unique in its unit; each suite has at least as many tests
as it reported before the catalogs (their counts in the test command)."""

import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import select  # noqa: E402

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("RS_MIGRATION", "RS_MATRIX", "RS_HOST_"))}


def catalogs():
    """{suite: its catalog} with the default environment."""
    # pylint: disable=import-outside-toplevel
    import guest_driver
    import guest_stack
    import introspect
    import migration
    import multipath
    import nvmf
    import rdma_matrix
    import resilience
    import verbs
    return {
        "verbs": verbs.catalog(),
        "guest-stack": guest_stack.catalog(),
        "guest-driver": guest_driver.catalog(),
        "rdma-matrix": rdma_matrix.catalog(),
        "resilience": {("boot",): resilience.names()},
        "introspect": {("boot",): introspect.names()},
        "nvmf": {("boot",): nvmf.names(False)},
        "nvmf --migrate": {("boot",): nvmf.names(True)},
        "multipath": {("boot",): multipath.names()},
        "migration": {u: p[1] for u, p in migration.parts().items()},
    }


# What each suite reported in a full run before its catalog.
COUNTS = {"verbs": 472, "guest-stack": 32, "guest-driver": 55,
          "rdma-matrix": 71, "resilience": 19,
          "introspect": 20, "nvmf": 9, "nvmf --migrate": 14,
          "multipath": 41, "migration": 101}


class CatalogTest(unittest.TestCase):
    def test_names(self) -> None:
        with mock.patch.dict(os.environ, ENV, clear=True):
            cats = catalogs()
        for suite, cat in cats.items():
            every = select.names(cat)
            self.assertEqual(len(every), COUNTS[suite], suite)
            for unit, names in cat.items():
                self.assertEqual(len(names), len(set(names)), (suite, unit))
            for n in every:
                self.assertNotIn(" ", n, suite)
                self.assertNotIn(": ", n, suite)
                self.assertTrue(select.Selection([n]).wants(n))

    def test_verbs_units(self) -> None:
        """A feature of a pairing boots that pairing with that feature
        alone; a check on both VMs selects both."""
        import verbs  # pylint: disable=import-outside-toplevel
        cat = verbs.catalog()
        sel = select.Selection(["adapter-rxe/odp"])
        self.assertEqual(sel.units(cat), [("adapter-rxe", "odp")])
        self.assertIn("adapter-rxe/odp/capture", cat[("adapter-rxe", "odp")])
        sel = select.Selection(["adapter-adapter/rc/rc-connect"])
        self.assertEqual([n for n in select.names(cat) if sel.wants(n)],
                         ["adapter-adapter/rc/rc-connect/vm1",
                          "adapter-adapter/rc/rc-connect/vm2"])
        self.assertEqual(select.Selection(["dc"]).units(cat),
                         [("three", "dc")])


if __name__ == "__main__":
    unittest.main()
