"""The terminal progress bar: drawn in place on a TTY, silent otherwise."""
import io

from precision_tool.comparison import ProgressBar, terminal_progress


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_bar_redraws_one_line_and_ends_it():
    stream = FakeTerminal()
    bar = ProgressBar("compare", stream, rate=1e9)
    bar(0, 4)
    bar(2, 4)
    bar(4, 4)
    bar.close()
    bar(4, 4)  # nothing after close
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "compare [" + "#" * 15 + "-" * 15 + "] 2/4 tensors" in text
    assert "] 4/4 tensors" in text.rsplit("\r", 1)[1]


def test_bar_is_rate_limited_but_always_draws_the_end():
    stream = FakeTerminal()
    bar = ProgressBar("compare", stream, rate=1e-6)
    for done in range(100):
        bar(done, 100)
    bar(100, 100)
    assert stream.getvalue().count("\r") == 2  # the first call and the final one


def test_no_bar_unless_the_stream_is_a_terminal():
    assert terminal_progress(stream=io.StringIO()) is None
    assert isinstance(terminal_progress(stream=FakeTerminal()), ProgressBar)
