"""tfdbg v1 run folders for tests, written with the project's schema (no TensorFlow)."""
from precision_tool.formats import tf_schema
from precision_tool.formats.tfdbg import DEFAULT_DEVICE, device_folder_name

US = 1_700_000_000_000_000


def write_graph(run, ops, graph_hash: str = "hash1"):
    """The executed-graph file tfdbg v1 writes beside the tensors: gives each op (``{name: type}``) its type."""
    graph = tf_schema.GraphDef()
    for name, op_type in ops.items():
        graph.node.add(name=name, op=op_type)
    folder = run / device_folder_name(DEFAULT_DEVICE)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"_tfdbg_graph_{graph_hash}_{US}").write_bytes(tf_schema.Event(graph_def=graph.SerializeToString())
                                                             .SerializeToString())
