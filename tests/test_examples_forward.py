"""Run the forward examples (examples/custom_layers.py, examples/network.py) and
check the lines they print against what the tutorials show."""
import pathlib
import runpy

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

NETWORK_REPR = """\
Network(
  (flatten): Flatten()
  (dense_relu_sequential): SequentialCell(
    (0): Dense(input_channels=784, output_channels=512, has_bias=True)
    (1): ReLU()
    (2): Dense(input_channels=512, output_channels=512, has_bias=True)
    (3): ReLU()
    (4): Dense(input_channels=512, output_channels=10, has_bias=True)
  )
)"""


def _run(name, capsys):
    """Run examples/<name> as __main__ and give what it printed."""
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_custom_layers_output(capsys):
    out = _run("custom_layers.py", capsys)
    lines = out.splitlines()
    assert lines[0] == ("Tensor(shape=[3], dtype=Float32, value= "
                        "[ 2.00000000e+01,  2.00000003e-01,  3.00000012e-01])")
    assert "Dropout2d output shape: (2, 3, 4, 4), mask dtype: Bool" in lines
    kept = lines[lines.index("kept channels (N, C):") + 1:][:2]
    scaled = lines[lines.index("output per channel (N, C):") + 1:][:2]
    assert kept == ["[[ True  True  True]", " [ True False  True]]"]
    assert scaled == ["[[1.25 1.25 1.25]", " [1.25 0.   1.25]]"]
    assert "NetWithParam output: [6.]" in lines
    assert "NetWithParam trainable params: ['weight']" in lines
    assert _run("custom_layers.py", capsys) == out


def test_network_output(capsys):
    out = _run("network.py", capsys)
    assert out.startswith(NETWORK_REPR + "\n")
    assert f"Model structure: {NETWORK_REPR}\n" in out
    lines = out.splitlines()
    assert lines[NETWORK_REPR.count("\n") + 1].startswith(
        "Tensor(shape=[1, 10], dtype=Float32, value=")
    assert any(line.startswith("Predicted class: [") for line in lines)
    shapes = [line for line in lines if line.startswith("(")]
    assert shapes == ["(3, 28, 28)", "(3, 784)", "(3, 20)", "(3, 10)"]
    assert any(line.startswith("Before ReLU: [[") for line in lines)
    after = next(line for line in lines if line.startswith("After ReLU: [["))
    assert "-" not in after
    layers = [line for line in lines if line.startswith("Layer: ")]
    assert layers == [f"Layer: dense_relu_sequential.{i}.{kind}"
                      for i in (0, 2, 4) for kind in ("weight", "bias")]
    sizes = [line for line in lines if line.startswith("Size: ")]
    assert sizes == ["Size: (512, 784)", "Size: (512,)", "Size: (512, 512)", "Size: (512,)",
                     "Size: (10, 512)", "Size: (10,)"]
    assert "Values : [0. 0.] " in lines
    assert _run("network.py", capsys) == out
