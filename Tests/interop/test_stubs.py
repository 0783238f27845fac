"""Stubs for every language from Protos/ (docs/CALLERS.md, "Stubs"): the
language options of herald/v1, a comment on every field, Go stubs generated
with Debian's protoc-gen-go and protoc-gen-go-grpc and compiled into a client
that calls the real server, and the Java, C# and Objective-C generators
placing the code where the options say.

protoc (protobuf-compiler), protoc-gen-go, protoc-gen-go-grpc, the Go
compiler and the Go libraries come from Debian (`scripts/bootstrap.sh
--test` installs them; compiling needs no network: GOPATH mode over
/usr/share/gocode, GOPROXY=off). The Go stubs are generated with the exact
command docs/CALLERS.md shows. The descriptor checks use grpcio-tools' protoc."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import PROTOS, ROOT

HERALD_PROTOS = sorted(str(p.relative_to(PROTOS)) for p in (PROTOS / "herald" / "v1").glob("*.proto"))
GO_PACKAGE = "github.com/herald/herald/gen/go/herald/v1"
OPTIONS = {
    "go_package": GO_PACKAGE + ";heraldv1",
    "java_package": "com.herald.api.v1",
    "java_multiple_files": True,
    "csharp_namespace": "Herald.V1",
    "objc_class_prefix": "HRLD",
}
DEBIAN_GOPATH = "/usr/share/gocode"


def protoc(*args: str) -> subprocess.CompletedProcess:
    """grpcio-tools' protoc (a full protoc: plugins and every built-in
    generator), with Protos/ on the include path."""
    return subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def descriptors():
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "set.pb")
        result = protoc(f"--descriptor_set_out={path}", "--include_source_info", *HERALD_PROTOS)
        assert result.returncode == 0, result.stderr
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(pathlib.Path(path).read_bytes())
    return {f.name: f for f in fds.file}


def test_every_herald_proto_sets_the_language_options(descriptors):
    assert set(descriptors) == set(HERALD_PROTOS)
    for name, f in descriptors.items():
        for option, value in OPTIONS.items():
            assert f.options.HasField(option), f"{name}: option {option} missing"
            assert getattr(f.options, option) == value, f"{name}: {option}"


def test_every_field_has_a_comment(descriptors):
    """Each field has a leading or trailing comment (its rule and limit, or
    for answers what it holds): the API reference is the protos."""
    missing = []
    for name, f in descriptors.items():
        comments = {tuple(loc.path): (loc.leading_comments + loc.trailing_comments).strip()
                    for loc in f.source_code_info.location}

        def walk(messages, path, prefix):
            for i, m in enumerate(messages):
                mpath = (*path, i)
                for j, field in enumerate(m.field):
                    if field.name.startswith("_") or m.options.map_entry:
                        continue
                    if not comments.get((*mpath, 2, j)):
                        missing.append(f"{name}: {prefix}{m.name}.{field.name}")
                walk(m.nested_type, (*mpath, 3), f"{prefix}{m.name}.")

        walk(f.message_type, (4,), "")
    assert not missing, "fields without a comment:\n" + "\n".join(missing)


def readme_protoc_line(language: str) -> str:
    """The one-line command docs/CALLERS.md gives for `language`."""
    text = (ROOT / "docs" / "CALLERS.md").read_text()
    match = re.search(rf"^ *# {language} \(.*\n *(\S.*)$", text, re.M)
    assert match, f"docs/CALLERS.md has no {language} protoc line"
    return match.group(1).strip()


def system_protoc():
    if not shutil.which("protoc"):
        pytest.skip("protoc not installed (apt-get install protobuf-compiler; scripts/bootstrap.sh --test does)")


def go_tools():
    system_protoc()
    tools = {t: shutil.which(t) for t in ("go", "protoc-gen-go", "protoc-gen-go-grpc")}
    absent = [t for t, path in tools.items() if not path]
    if absent or not os.path.isdir(os.path.join(DEBIAN_GOPATH, "src", "google.golang.org", "grpc")):
        pytest.skip(f"Go toolchain or Debian Go packages missing ({', '.join(absent) or 'golang-google-grpc-dev'}): "
                    "scripts/bootstrap.sh installs golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev")
    return tools


GO_CLIENT = """\
// A Go client of Herald built on the generated stubs: Status, then Render.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	heraldv1 "%s"
	"google.golang.org/grpc"
)

func main() {
	conn, err := grpc.Dial(os.Args[1], grpc.WithInsecure(), grpc.WithBlock(), grpc.WithTimeout(10*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	push := heraldv1.NewPushServiceClient(conn)
	status, err := push.Status(ctx, &heraldv1.StatusRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "status:", err)
		os.Exit(1)
	}
	fmt.Println("version", status.GetVersion(), status.GetServing())
	rendered, err := push.Render(ctx, &heraldv1.RenderRequest{
		BundleId: "com.example.app",
		Platform: heraldv1.Platform_PLATFORM_IOS,
		Content: &heraldv1.Content{
			Title: &heraldv1.LocalizedText{Single: &heraldv1.LocalizedText_Text{Text: "Hello"}},
			Body:  &heraldv1.LocalizedText{Single: &heraldv1.LocalizedText_Text{Text: "from Go"}},
		},
		IdempotencyKey: "go-1",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	fmt.Println("payload", rendered.GetApns().GetPayloadJson())
}
"""


def test_go_stubs_generate_compile_and_call_herald(herald, tmp_path):
    go_tools()
    gopath = tmp_path / "gopath"
    checkout = gopath / "src" / "github.com" / "herald" / "herald"
    checkout.mkdir(parents=True)
    src = gopath / "src"
    # docs/CALLERS.md's command, run from a checkout's root (Protos/ linked in):
    # it writes gen/go/herald/v1, which is the go_package path in GOPATH.
    (checkout / "Protos").symlink_to(PROTOS)
    command = readme_protoc_line("Go")
    assert command.startswith("protoc "), command
    result = subprocess.run(["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, command + "\n" + result.stderr
    package_dir = src / GO_PACKAGE
    generated = sorted(p.name for p in package_dir.iterdir())
    assert generated == sorted([f"{pathlib.Path(p).stem}.pb.go" for p in HERALD_PROTOS]
                               + ["device_service_grpc.pb.go", "push_service_grpc.pb.go"]), generated
    for p in package_dir.iterdir():
        assert p.read_text().splitlines().count("package heraldv1") == 1, p.name
    client = src / "heraldclient"
    client.mkdir()
    (client / "main.go").write_text(GO_CLIENT % GO_PACKAGE)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "GO111MODULE": "off",
        "GOPATH": f"{gopath}:{DEBIAN_GOPATH}",
        "GOPROXY": "off",
        "GOFLAGS": "",
        # Kept between runs: the grpc-go compile is the slow part.
        "GOCACHE": str(ROOT / ".build" / "go-cache"),
    }
    binary = tmp_path / "heraldclient-bin"
    build = subprocess.run(["go", "build", "-o", str(binary), "heraldclient"], cwd=gopath,
                           capture_output=True, text=True, timeout=900, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(binary), herald.address], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("version ") and lines[0].endswith("SERVING_STATE_SERVING"), run.stdout
    assert lines[1].startswith('payload {"aps":{"alert":{"title":"Hello","body":"from Go"}}'), run.stdout
    assert '"ctx_idempotency_key":"go-1"' in lines[1], run.stdout


def test_java_csharp_and_objc_generators_follow_the_options(tmp_path):
    system_protoc()
    for lang in ("java", "csharp", "objc"):
        (tmp_path / lang).mkdir()
    result = subprocess.run(["protoc", f"-I{PROTOS}", f"--java_out={tmp_path / 'java'}",
                             f"--csharp_out={tmp_path / 'csharp'}", f"--objc_out={tmp_path / 'objc'}", *HERALD_PROTOS],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    java = tmp_path / "java" / "com" / "herald" / "api" / "v1"
    # java_multiple_files: one class per message, in the java_package.
    for cls in ("ScheduleRequest", "Content", "LocalizedText", "GetMessageResponse", "RegisterDeviceRequest",
                "PushServiceProto", "TypesProto"):
        path = java / f"{cls}.java"
        assert path.is_file(), sorted(p.name for p in java.iterdir())
        assert "package com.herald.api.v1;" in path.read_text()
    csharp = (tmp_path / "csharp" / "PushService.cs").read_text()
    assert "namespace Herald.V1 {" in csharp
    objc = (tmp_path / "objc" / "herald" / "v1" / "PushService.pbobjc.h").read_text()
    assert "@interface HRLDScheduleRequest : GPBMessage" in objc
