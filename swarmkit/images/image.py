"""Offline images built from local files: the Apache Kafka broker, Spark, the tansu broker and the preflight probe.

No base image can be pulled, so every image starts FROM scratch.  The Kafka image's jars come from
Maven Central and its Java runtime from this machine's JDK (jlink); both are made once into a cache
outside git (``$SWARMKIT_CACHE``, default /var/cache/swarmkit) and reused by every later build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from swarmkit.assets import STACKS_DIR, tansu_binary
from swarmkit.errors import SpecError, SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.images import debian, maven

BUSYBOX = Path("/bin/busybox")
SOCAT = Path("/usr/bin/socat")
TANSU_TAG = "swarmkit/tansu:0.6.0"
PROBE_TAG = "swarmkit/probe:2"  # 2: with the JMX exporter's jar and the node exporter
KAFKA_VERSION = "4.4.0"  # what a new cluster runs unless told otherwise
KAFKA_VERSIONS = ("4.3.1", "4.4.0")  # every version an image is built for (Maven Central serves both), oldest first
KAFKA_REPOSITORY = "swarmkit/kafka"
KAFKA_TAG = f"{KAFKA_REPOSITORY}:{KAFKA_VERSION}"
KAFKA_DIR = STACKS_DIR / "kafka"
AGENT_POM = KAFKA_DIR / "metrics-agent" / "pom.xml"
AGENT_JAR = "jmx_prometheus_javaagent.jar"  # its name in the probe image: the stack names no version
NODE_EXPORTER_PACKAGES = ("prometheus-node-exporter",)
NODE_EXPORTER_BINARY = "usr/bin/prometheus-node-exporter"
ALERTMANAGER_TAG = "swarmkit/alertmanager:0.25.0"  # bookworm's prometheus-alertmanager package
ALERTMANAGER_PACKAGES = ("prometheus-alertmanager",)
SPARK_DIR = STACKS_DIR / "spark"
PROMETHEUS_TAG = "swarmkit/prometheus:2.42.0"  # bookworm's prometheus package
# Debian's prometheus serves its classic web UI from /usr/share/prometheus/web, whose static/ links
# into these packages' JavaScript and fonts (the package's Depends).
PROMETHEUS_PACKAGES = (
    "prometheus", "fonts-glyphicons-halflings", "libjs-bootstrap", "libjs-bootstrap4", "libjs-d3",
    "libjs-eonasdan-bootstrap-datetimepicker", "libjs-jquery", "libjs-jquery-hotkeys", "libjs-moment",
    "libjs-moment-timezone", "libjs-mustache", "libjs-popper.js", "libjs-rickshaw",
)  # fmt: skip
# The modules Kafka's server and tools use.  jdeps over the resolved jars also names java.compiler
# and java.scripting, for log4j-core's annotation processor and script conditions, which a running
# Kafka never loads.  Added: jdk.security.auth for SASL/GSSAPI (Krb5LoginModule is named in
# configuration, so jdeps cannot see it).
JRE_MODULES = (
    "java.base", "java.management", "java.naming", "java.security.jgss", "java.security.sasl",
    "java.logging", "java.xml", "java.desktop", "java.sql", "jdk.unsupported", "jdk.management",
    "jdk.management.agent", "jdk.crypto.ec", "jdk.security.auth",
)  # fmt: skip
# Spark's daemons and executors need two more: jdk.zipfs (the web UI serves its files out of a jar)
# and jdk.incubator.vector (every executor JVM is started with --add-modules=jdk.incubator.vector).
SPARK_JRE_MODULES = (*JRE_MODULES, "jdk.zipfs", "jdk.incubator.vector")
# The Kafka image's JVMs also start the Prometheus JMX exporter as a Java agent: java.instrument loads
# agents (libinstrument), jdk.httpserver serves its metrics (jdeps over the agent's jar names both).
KAFKA_JRE_MODULES = (*JRE_MODULES, "java.instrument", "jdk.httpserver")
JLINK_OPTIONS = ("--strip-debug", "--no-header-files", "--no-man-pages")
# java.desktop's native GUI, font and sound libraries: a headless server never loads them, and they
# would pull X11, freetype and ALSA into the image.
GUI_LIBRARIES = (
    "libawt_xawt.so", "libjawt.so", "libsplashscreen.so", "libjsound.so", "libfontmanager.so",
    "libjavajpeg.so", "liblcms.so",
)  # fmt: skip


@dataclass(frozen=True)
class ImageRecipe:
    """What a build context holds: files by name, host files at their own path under rootfs/,
    and whole directories (jars, a Java runtime) by name."""

    tag: str
    dockerfile: Path
    files: tuple[tuple[Path, str], ...]
    rootfs: tuple[Path, ...] = ()
    directories: tuple[tuple[Path, str], ...] = ()


def _require(path: Path, package: str) -> Path:
    if not path.exists():
        raise SwarmkitError(f"{path} is missing", hint=f"apt-get install {package} (scripts/setup.sh does)")
    return path


def _shared_libraries(binary: Path, provided: frozenset[str] = frozenset()) -> list[Path]:
    """The libraries a dynamic binary loads, as ldd resolves them on this machine.

    A library ldd cannot find is an error unless it is one of ``provided`` (found at run time
    next to the binary, as a JRE's libjvm.so is)."""
    output = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libraries = []
    for line in output.splitlines():
        parts = line.split()
        if "not found" in line and parts[0] not in provided:
            raise SwarmkitError(f"{binary} needs {parts[0]}, which this machine lacks (ldd: {line.strip()})")
        candidate = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if candidate.startswith("/"):
            libraries.append(Path(candidate))
    return libraries


def tansu_recipe() -> ImageRecipe:
    return ImageRecipe(
        tag=TANSU_TAG,
        dockerfile=STACKS_DIR / "tansu" / "Dockerfile",
        files=(
            (_require(BUSYBOX, "busybox-static"), "busybox"),
            (tansu_binary(), "tansu"),
            (STACKS_DIR / "node-identity.sh", "node-identity.sh"),
            (STACKS_DIR / "tansu" / "entrypoint.sh", "entrypoint.sh"),
        ),
    )


def probe_recipe() -> ImageRecipe:
    """swarmkit's per-node image: preflight's probe (busybox, socat), and what `deploy` and `metrics up` run on every
    node: the JMX exporter's jar (copied into each node's metrics-agent volume) and Debian's node exporter."""
    socat = _require(SOCAT, "socat")
    cache = maven.cache_dir()
    with maven.cache_lock(cache):
        agent = _agent_jar(maven.resolved(AGENT_POM, cache / "jmx-exporter" / "libs"))
        exporter = debian.unpacked(NODE_EXPORTER_PACKAGES, cache / "node-exporter-debian" / "root") / NODE_EXPORTER_BINARY
    return ImageRecipe(
        tag=PROBE_TAG,
        dockerfile=STACKS_DIR / "probe" / "Dockerfile",
        files=((_require(BUSYBOX, "busybox-static"), "busybox"), (agent, AGENT_JAR), (exporter, "node-exporter")),
        rootfs=tuple(dict.fromkeys((socat, *_shared_libraries(socat), *_shared_libraries(exporter)))),
    )


def _prometheus_web(root: Path) -> Path:
    """The web UI's files with the links into other packages resolved, without moment-timezone's 212 MB of
    per-zone data (the UI loads moment-timezone-with-data.min.js only); made once per unpacked tree."""
    web = root.with_name(f"web-{_stamp(root)[:12]}")
    if not web.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=".web-", dir=root.parent)) / "web"
        shutil.copytree(
            root / "usr" / "share" / "prometheus" / "web",
            staging,
            ignore=lambda directory, names: ["data"] if directory.endswith("moment-timezone") else [],
        )
        staging.rename(web)
        staging.parent.rmdir()
    return web


def prometheus_recipe() -> ImageRecipe:
    """The Prometheus server image: the binary and web UI of Debian's prometheus package on busybox, no base image."""
    cache = maven.cache_dir()
    with maven.cache_lock(cache):
        root = debian.unpacked(PROMETHEUS_PACKAGES, cache / "prometheus-debian" / "root")
        web = _prometheus_web(root)
    binary = root / "usr" / "bin" / "prometheus"
    return ImageRecipe(
        tag=PROMETHEUS_TAG,
        dockerfile=STACKS_DIR / "prometheus" / "Dockerfile",
        files=((_require(BUSYBOX, "busybox-static"), "busybox"), (binary, "prometheus")),
        rootfs=tuple(_shared_libraries(binary)),
        directories=((web, "web"),),
    )


def alertmanager_recipe() -> ImageRecipe:
    """The Alertmanager image: the binary and templates of Debian's prometheus-alertmanager on busybox, no base image."""
    cache = maven.cache_dir()
    with maven.cache_lock(cache):
        root = debian.unpacked(ALERTMANAGER_PACKAGES, cache / "alertmanager-debian" / "root")
    binary = root / "usr" / "bin" / "prometheus-alertmanager"
    return ImageRecipe(
        tag=ALERTMANAGER_TAG,
        dockerfile=STACKS_DIR / "alertmanager" / "Dockerfile",
        files=((_require(BUSYBOX, "busybox-static"), "busybox"), (binary, "alertmanager")),
        rootfs=tuple(_shared_libraries(binary)),
        directories=((root / "usr" / "share" / "prometheus" / "alertmanager", "share"),),
    )


def _link_or_copy(source: str, target: str) -> None:
    """Hard-link when the cache and the build context share a file system: 150 MB of jars and JRE
    are then assembled in milliseconds instead of copied."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _jdk_home() -> Path:
    """The JDK whose jlink and jmods make the image's runtime (the one on PATH)."""
    home = Path(maven.tool("jlink", "openjdk-17-jdk-headless")).resolve().parent.parent
    if not (home / "jmods" / "java.base.jmod").is_file():
        raise SwarmkitError(f"{home} has no jmods/ for jlink", hint="apt-get install openjdk-17-jdk-headless")
    return home


def _runtime(cache: Path, modules: tuple[str, ...]) -> Path:
    """A Java runtime with only the modules an image needs, made by jlink once per JDK build and module
    list (the cache key), without the GUI libraries; renamed into place when complete."""
    home = _jdk_home()
    release = (home / "release").read_text()
    found = re.search(r'JAVA_RUNTIME_VERSION="([^"]+)"', release) or re.search(r'JAVA_VERSION="([^"]+)"', release)
    key = maven.digest(release, *modules, *JLINK_OPTIONS, *GUI_LIBRARIES)[:12]
    target = cache / f"jre-{found.group(1) if found else 'unknown'}-{key}"
    if target.is_dir():
        return target
    staging = Path(tempfile.mkdtemp(prefix=".jre-", dir=cache))
    command = [str(home / "bin" / "jlink"), "--add-modules", ",".join(modules), *JLINK_OPTIONS]
    result = subprocess.run([*command, "--output", str(staging / "jre")], capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        last = (result.stderr or result.stdout).strip().splitlines()
        raise SwarmkitError(
            f"jlink could not make an image's Java runtime: {last[-1] if last else 'no output'}",
            hint=f"run it to see why: {shlex.join([*command, '--output', '/tmp/jre'])}",
        )
    for library in GUI_LIBRARIES:
        (staging / "jre" / "lib" / library).unlink(missing_ok=True)
    (staging / "jre").rename(target)
    staging.rmdir()
    return target


def _jni_libraries(jar_dirs: tuple[Path, ...], scratch: Path) -> list[Path]:
    """This machine's native libraries inside the jars (zstd-jni, snappy-java, lz4-java), extracted
    to ``scratch``: they are unpacked into /tmp and loaded only when a batch is first compressed."""
    names = {"x86_64": ("amd64", "x86_64"), "aarch64": ("aarch64", "arm64")}.get(platform.machine(), ())
    wanted = re.compile(rf"(^|/)linux/({'|'.join(names) or '-'})/[^/]+\.so$", re.IGNORECASE)
    extracted = []
    for jar in sorted(path for directory in jar_dirs for path in directory.glob("*.jar")):
        with zipfile.ZipFile(jar) as archive:
            for entry in (name for name in archive.namelist() if wanted.search(name)):
                target = scratch / jar.stem / entry
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(entry))
                extracted.append(target)
    return extracted


def _runtime_libraries(runtime: Path, jar_dirs: tuple[Path, ...]) -> list[Path]:
    """The machine's libraries that the runtime's java and .so files and the jars' JNI libraries
    load (ld-linux, libc, libm, libz, libstdc++, libgcc_s, libpthread, ...): with no base image
    they must be copied in.  A missing one shows only at run time, e.g. zstd-jni needs
    libpthread.so.0, which nothing in the JRE links."""
    own = sorted(runtime.glob("lib/**/*.so"))
    provided = frozenset(library.name for library in own)
    found: dict[Path, None] = {}
    with tempfile.TemporaryDirectory(prefix="swarmkit-jni-") as scratch:
        for binary in (runtime / "bin" / "java", *own, *_jni_libraries(jar_dirs, Path(scratch))):
            for library in _shared_libraries(binary, provided):
                if not library.is_relative_to(runtime):
                    found.setdefault(library)
    return list(found)


def _stamp(directory: Path) -> str:
    """What identifies a jar directory: Maven's resolution stamp beside it, else its jars' names and sizes
    (pyspark's own jars, installed by pip, have no stamp)."""
    stamp = directory.with_name(f"{directory.name}.sha256")
    if stamp.is_file():
        return stamp.read_text()
    return maven.digest(*(f"{jar.name}:{jar.stat().st_size}" for jar in sorted(directory.glob("*.jar"))))


def _cached_runtime_libraries(runtime: Path, jar_dirs: tuple[Path, ...]) -> tuple[Path, ...]:
    """_runtime_libraries, remembered in the cache beside the runtime: reading every jar's index takes
    seconds, and the answer changes only with the jars (their stamps) or the runtime."""
    stamps = [_stamp(directory) for directory in jar_dirs]
    memo = runtime.parent / f"host-libraries-{maven.digest(runtime.name, *stamps)[:12]}"
    if memo.is_file():
        return tuple(Path(line) for line in memo.read_text().splitlines() if line)
    libraries = _runtime_libraries(runtime, jar_dirs)
    memo.write_text("".join(f"{library}\n" for library in libraries))
    return tuple(libraries)


def _agent_jar(directory: Path) -> Path:
    """The one jar the metrics agent's pom resolves (the Prometheus JMX exporter, shaded)."""
    jars = sorted(directory.glob("jmx_prometheus_javaagent-*.jar"))
    if len(jars) != 1:
        raise SwarmkitError(
            f"{directory} holds {len(jars)} JMX exporter jars, not one", hint=f"remove {directory} and build again"
        )
    return jars[0]


def kafka_tag(version: str) -> str:
    """swarmkit's own image of one Kafka version: the tag names the version."""
    return f"{KAFKA_REPOSITORY}:{version}"


def check_kafka_version(version: str) -> str:
    if version not in KAFKA_VERSIONS:
        raise SpecError(
            f"Kafka {version}: swarmkit builds no image for it",
            hint=f"choose one of {', '.join(KAFKA_VERSIONS)} (Maven Central's releases an image is made for)",
        )
    return version


def kafka_recipe(version: str = KAFKA_VERSION) -> ImageRecipe:
    """The Apache Kafka broker image of one version: Maven's jars and a jlink runtime (both cached) on busybox.

    Resolving is the slow part of a first build (Maven, jlink); every later call only checks stamps."""
    cache = maven.cache_dir()
    release = (("kafka.version", check_kafka_version(version)),)
    with maven.cache_lock(cache):
        libs = maven.resolved(KAFKA_DIR / "pom.xml", cache / f"kafka-{version}" / "libs", release)
        tools = maven.resolved(KAFKA_DIR / "tools" / "pom.xml", cache / f"kafka-{version}" / "tools-libs", release)
        runtime = _runtime(cache, KAFKA_JRE_MODULES)
        libraries = _cached_runtime_libraries(runtime, (libs, tools))
    scripts = ("run", "env-to-properties.sh", "log4j2.properties", "tools-log4j2.properties", "cds.sh")
    return ImageRecipe(
        tag=kafka_tag(version),
        dockerfile=KAFKA_DIR / "Dockerfile",
        files=(
            (_require(BUSYBOX, "busybox-static"), "busybox"),
            (STACKS_DIR / "node-identity.sh", "node-identity.sh"),
            (STACKS_DIR / "apache" / "entrypoint.sh", "entrypoint.sh"),
            *((KAFKA_DIR / name, name) for name in scripts),
        ),
        rootfs=libraries,
        directories=((runtime, "jre"), (libs, "libs"), (tools, "tools-libs"), (KAFKA_DIR / "bin", "bin")),
    )


def spark_tag(version: str) -> str:
    return f"swarmkit/spark:{version}"


def spark_recipe(version: str, spark_jars: Path, connector: Path) -> ImageRecipe:
    """The Spark standalone image (master, worker and their executors): pyspark's own jars (``spark_jars``)
    and the Kafka connector's (``connector``) on the Kafka image's Java runtime plus two modules, no Python.

    The caller finds both jar directories (the installed pyspark, the connector cache), so the image
    always matches the driver that submits to it."""
    cache = maven.cache_dir()
    with maven.cache_lock(cache):
        runtime = _runtime(cache, SPARK_JRE_MODULES)
        libraries = _cached_runtime_libraries(runtime, (spark_jars, connector))
    return ImageRecipe(
        tag=spark_tag(version),
        dockerfile=SPARK_DIR / "Dockerfile",
        files=((_require(BUSYBOX, "busybox-static"), "busybox"), (SPARK_DIR / "entrypoint.sh", "entrypoint.sh")),
        rootfs=libraries,
        directories=((runtime, "jre"), (spark_jars, "jars"), (connector, "connector")),
    )


@contextlib.contextmanager
def build_context(recipe: ImageRecipe) -> Iterator[Path]:
    """The recipe's build context in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="swarmkit-image-") as scratch:
        context = Path(scratch)
        shutil.copy(recipe.dockerfile, context / "Dockerfile")
        for source, name in recipe.files:
            shutil.copy(source, context / name)
        for source, name in recipe.directories:
            shutil.copytree(source, context / name, copy_function=_link_or_copy)
        rootfs = context / "rootfs"
        rootfs.mkdir()
        for source in recipe.rootfs:
            target = rootfs / source.relative_to("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source.resolve(), target)
        yield context


def build(engine: Engine, recipe: ImageRecipe, tag: str) -> None:
    """Assemble the build context and build it on one engine."""
    with build_context(recipe) as context:
        dockerapi.build_image(engine, context, tag)


def publish(engine: Engine, recipe: ImageRecipe, registry: str) -> str:
    """Build on one engine and push to the registry every host pulls from; returns the full reference.

    The tag ends with a digest of the build context, so a registry that already holds this very image
    (the sandboxes' registries share one store) is neither built for nor pushed to again."""
    with build_context(recipe) as context:
        reference = f"{registry}/{recipe.tag}-{context_digest(context)[:12]}"
        if not registry_holds(reference):
            dockerapi.build_image(engine, context, reference)
            dockerapi.push_image(engine, reference)
    return reference


def context_digest(context: Path) -> str:
    """sha256 over every file's path, mode and content: equal digests, equal builds."""
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(context)}\0{path.stat().st_mode:o}\0".encode())
        with path.open("rb") as content:
            digest.update(hashlib.file_digest(content, "sha256").digest())
    return digest.hexdigest()


def registry_holds(reference: str) -> bool:
    """Whether a plain-HTTP registry (the sandbox's) has the manifest; any other answer means build and push."""
    registry, _, name = reference.partition("/")
    repository, _, tag = name.rpartition(":")
    request = urllib.request.Request(
        f"http://{registry}/v2/{repository}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False
