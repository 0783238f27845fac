"""Generated/ must be exactly what scripts/gen-protos.sh makes from Protos/."""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_generated_is_in_sync_with_protos():
    result = subprocess.run([str(ROOT / "scripts" / "gen-protos.sh"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
