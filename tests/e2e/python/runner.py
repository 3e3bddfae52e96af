"""Runs the Python end-to-end suite with unittest and records pass/fail counts.

usage: runner.py COUNTS_FILE [TEST_NAME ...]
  TEST_NAME  e.g. test_types, test_types.TypeTest, test_types.TypeTest.test_int64
             (default: every test_*.py beside this file)

Writes "PASSED FAILED SKIPPED" to COUNTS_FILE. A test counts as passed only if it ran and
all its subtests passed; tests that never ran because their class could not start count as
failed, and so does a server that died or did not stop cleanly (tearDownClass error).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class CountingResult(unittest.TextTestResult):

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0
        self.teardown_errors = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addError(self, test, err):
        super().addError(test, err)
        if not isinstance(test, unittest.TestCase) and str(test).startswith("tearDown"):
            self.teardown_errors += 1


def main():
    counts_file, names = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if names:
        suite = loader.loadTestsFromNames(names)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    total = suite.countTestCases()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=CountingResult)
    result = runner.run(suite)
    skipped = len(result.skipped)
    failed = total - result.passed - skipped + result.teardown_errors
    with open(counts_file, "w") as f:
        f.write("%d %d %d\n" % (result.passed, failed, skipped))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
