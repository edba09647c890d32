"""One exit rule for a batch (issue 40): ``errors.batch_exit_code``, derived by hand from the contract the README
states -- a finding wins over unusable input, nothing found but something unread is 2."""
import pytest

from precision_tool.errors import EXIT_FAILED_CHECK, EXIT_OK, EXIT_UNUSABLE_INPUT, batch_exit_code

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("found, unusable, expected", [
    (True, True, EXIT_FAILED_CHECK), (True, False, EXIT_FAILED_CHECK),
    (False, True, EXIT_UNUSABLE_INPUT), (False, False, EXIT_OK)])
def test_a_finding_wins_over_unusable_input(found, unusable, expected):
    assert batch_exit_code(found, unusable) == expected
