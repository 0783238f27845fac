"""Generated/ must be exactly what scripts/gen-protos.sh makes from Protos/."""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_generated_is_in_sync_with_protos():
    result = subprocess.run([str(ROOT / "scripts" / "gen-protos.sh"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def _copy_tree(tmp_path):
    """Protos/, Generated/, scripts/ and the conformances file, in a scratch tree."""
    import shutil
    for d in ("Protos", "Generated", "scripts"):
        shutil.copytree(ROOT / d, tmp_path / d, symlinks=True)
    wire = pathlib.Path("Sources/HeraldService/Wire")
    (tmp_path / wire).mkdir(parents=True)
    shutil.copy(ROOT / wire / "GeneratedMessage+Conformances.swift", tmp_path / wire)
    return tmp_path / wire / "GeneratedMessage+Conformances.swift"


def _gen(tree, *args):
    return subprocess.run([str(tree / "scripts" / "gen-protos.sh"), *args],
                          capture_output=True, text=True, timeout=120)


def test_hand_edited_conformance_fails_the_check(tmp_path):
    conformances = _copy_tree(tmp_path)
    text = conformances.read_text()
    assert "herald__v1__status_request__init(&m)" in text
    conformances.write_text(text.replace("herald__v1__status_request__init(&m)", "herald__v1__status_response__init(&m)"))
    result = _gen(tmp_path, "--check")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "GeneratedMessage+Conformances.swift" in result.stderr


def test_every_message_struct_gets_a_conformance(tmp_path):
    import re
    conformances = _copy_tree(tmp_path)
    headers = sorted((ROOT / "Generated" / "include").rglob("*.pb-c.h"))
    structs = {m for h in headers for m in re.findall(r"^void\s+\w+__init\s*\n\s*\((\w+)\s+\*message\);",
                                                      h.read_text(), re.M)}
    declared = set(re.findall(r"^extension (\w+): GeneratedMessage \{", conformances.read_text(), re.M))
    assert structs and declared == structs
    # A message added to a proto gets its conformance on the next run, and not before.
    with open(tmp_path / "Protos" / "herald" / "v1" / "types.proto", "a") as f:
        f.write("\nmessage ConformanceProbe {\n  string note = 1;\n}\n")
    assert _gen(tmp_path, "--check").returncode == 1
    result = _gen(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    text = conformances.read_text()
    assert ("extension Herald__V1__ConformanceProbe: GeneratedMessage {\n"
            "    static func initialized() -> Self { var m = Self(); herald__v1__conformance_probe__init(&m); return m }\n"
            "}\n") in text
    assert _gen(tmp_path, "--check").returncode == 0
