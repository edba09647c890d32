"""The customize_dtypes file: the lines of the adapter's documentation read as they are meant (issue 20)."""
import pytest

from precision_tool.formats.customize_dtypes import (CustomizeDtypesError, customize_lines, parse_customize_dtypes,
                                                     read_customize_dtypes, write_customize_dtypes)

DOC_EXAMPLES = ("model/dense_1/MatMul::InputDtype:float32,float32,OutputDtype:float32\n"
                "OpType::MatMulV2:InputDtype:float16,float16,float32,OutputDtype:float32\n"
                "# a comment\n\n"
                "model/conv/Conv2D::InputDtype:float16,float16,OutputDtype:float16\n")


def test_the_documented_lines_by_name_and_by_type():
    parsed = parse_customize_dtypes(DOC_EXAMPLES)
    assert parsed.by_name["model/dense_1/MatMul"] == (("float32", "float32"), ("float32",))
    assert parsed.by_type["MatMulV2"] == (("float16", "float16", "float32"), ("float32",))
    assert parsed.float32_ops() == frozenset(["model/dense_1/MatMul"])  # the float16 line keeps nothing in fp32


def test_written_lines_are_the_documented_form_and_read_back(tmp_path):
    assert customize_lines([("model/dense_1/MatMul", ["float32"] * 2, ["float32"])]) == \
        "model/dense_1/MatMul::InputDtype:float32,float32,OutputDtype:float32\n"  # the doc's own example
    ops = [("a/conv", ["float32"] * 3, ["float32"]), ("b/Mean", ["float32", "int32"], ["float32"])]
    path = write_customize_dtypes(tmp_path / "precision" / "customize_dtypes.cfg", ops)
    assert read_customize_dtypes(path).float32_ops() == frozenset(["a/conv", "b/Mean"])  # an int32 axis stays int32


@pytest.mark.parametrize("line, cause", [
    ("no separator here", "line 1: expected NAME::InputDtype"),
    ("OpType::MatMulV2", "line 1: expected OpType::TYPE:InputDtype"),
    ("x::Dtypes:float32", "line 1: expected InputDtype:... before OutputDtype"),
    ("x::InputDtype:,OutputDtype:", "line 1: no InputDtype or OutputDtype given"),
])
def test_a_bad_line_is_one_error_naming_the_file_and_line(tmp_path, line, cause):
    path = tmp_path / "customize_dtypes.cfg"
    path.write_text(line + "\n")
    with pytest.raises(CustomizeDtypesError, match=cause) as caught:
        read_customize_dtypes(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
