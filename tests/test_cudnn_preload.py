"""hardware/cudnn: Transformer Engine imported against torch's cuDNN (the sub-libraries loaded from
torch's cuDNN folder, in dependency order, before TE's core library asks the loader for them)."""

from __future__ import annotations

from pathlib import Path

from llmbench.hardware.cudnn import CUDNN_SUBLIBS, loaded_cudnn_dirs, mixed_cudnn, preload_torch_cudnn, sublib_paths

WHEEL = "/usr/lib/python3/dist-packages/nvidia/cudnn/lib"
SYSTEM = "/lib/x86_64-linux-gnu"


def _map(path: str) -> str:
    return f"7f00-7f10 r-xp 00000000 fd:01 1234                       {path}"


def test_the_folders_of_loaded_cudnn_libraries_are_read_from_the_maps() -> None:
    lines = [_map(f"{WHEEL}/libcudnn.so.9"), _map(f"{WHEEL}/libcudnn_graph.so.9"), "7f00-7f10 rw-p 0 00:00 0",
             _map(f"{SYSTEM}/libcudnn_cnn.so.9"), _map("/usr/lib/libc.so.6")]
    assert loaded_cudnn_dirs(lines) == {"libcudnn": {WHEEL}, "libcudnn_graph": {WHEEL}, "libcudnn_cnn": {SYSTEM}}


def test_sub_libraries_from_two_folders_are_reported_and_the_front_library_is_not() -> None:
    clash = [_map(f"{WHEEL}/libcudnn_graph.so.9"), _map(f"{SYSTEM}/libcudnn_cnn.so.9")]
    text = mixed_cudnn(clash)
    assert text is not None and "2 folders" in text and "libcudnn_cnn" in text and WHEEL in text
    ok = [_map(f"{WHEEL}/libcudnn.so.9"), _map(f"{SYSTEM}/libcudnn.so.9.10.2"), _map(f"{WHEEL}/libcudnn_graph.so.9")]
    assert mixed_cudnn(ok) is None


def test_sub_libraries_are_loaded_in_dependency_order(tmp_path: Path) -> None:
    for sub in reversed(CUDNN_SUBLIBS):
        (tmp_path / f"libcudnn_{sub}.so.9").write_bytes(b"")
    (tmp_path / "libcudnn_cnn.so").write_bytes(b"")  # an unversioned link is not loaded twice
    names = [p.name for p in sublib_paths(tmp_path)]
    assert names == [f"libcudnn_{sub}.so.9" for sub in CUDNN_SUBLIBS]
    assert names.index("libcudnn_graph.so.9") < names.index("libcudnn_ops.so.9") < names.index("libcudnn_cnn.so.9")


def test_preload_loads_from_the_folder_of_torchs_cudnn(tmp_path: Path) -> None:
    lib = tmp_path / "cudnn"
    lib.mkdir()
    for sub in ("graph", "ops", "cnn"):
        (lib / f"libcudnn_{sub}.so.9").write_bytes(b"")
    maps = tmp_path / "maps"
    maps.write_text(_map(f"{lib}/libcudnn.so.9") + "\n" + _map(f"{SYSTEM}/libc.so.6") + "\n")
    loaded: list[str] = []
    assert preload_torch_cudnn(maps, load=loaded.append) == loaded
    assert [Path(p).name for p in loaded] == ["libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"]


def test_nothing_is_preloaded_where_torch_has_no_cudnn_mapped(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(_map(f"{SYSTEM}/libc.so.6") + "\n")
    loaded: list[str] = []
    assert preload_torch_cudnn(maps, load=loaded.append) == [] and loaded == []
