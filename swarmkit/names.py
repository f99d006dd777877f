"""Names and values the user gives, checked in one place whatever their way in (a CLI option, an inventory field,
an environment variable, the declared state).

A stack name becomes ``<stack>_broker``, a volume ``<stack>_identity``, a node label
``swarmkit.cluster-id.<stack>`` and a directory ``.swarmkit/<inventory>.<stack>.pki``; a sandbox
name becomes a directory under the sandbox root, a bridge and namespace prefixes; a user name a
password file; a host name, a zone or a topic name is written into the rendered stack. Each is checked here
before any of that is built, so no name can reach outside its own place (no '/', '..', '' or whitespace), and a
wrong one is bad input (exit 2). Every pattern is matched whole (``fullmatch``: ``$`` would let a trailing
newline through); free text (a label's value, a command) may hold no control character; a refused value is
shown escaped (``shown``), so a NUL is visible and a newline cannot split the error line.
"""

from __future__ import annotations

import re
import unicodedata

from swarmkit.errors import SpecError

STACK_MAX = 40  # <stack>_identity-<12-char node id> stays within Docker's 63-character service names
STACK_NAME = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{STACK_MAX - 1}}}")
SANDBOX_NAME = re.compile(r"[a-z][a-z0-9]{0,5}")  # skb-<name> and skv-<name>-<n> fit 15-character links
SANDBOX_PREFIX = re.compile(r"[a-z][a-z0-9-]{0,15}")
USER_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")  # no ',', '=' or ']' that would break --add-scram
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", re.ASCII)  # an inventory host's name
DNS_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)  # one label of a DNS name
ZONE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}", re.ASCII)  # Docker's reverse-DNS label keys
LABEL_VALUE_MAX = 1024
RESERVED_LABELS = "swarmkit."  # swarmkit's own node labels (broker ids, host names, cluster ids): never the user's
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+", re.ASCII)  # Kafka's legal topic characters
TOPIC_MAX = 249  # Kafka's limit
INTERNAL_TOPICS = "__"  # Kafka's own topics: __consumer_offsets, __transaction_state, __cluster_metadata, ...
SETTING_KEY = re.compile(r"[a-zA-Z0-9._-]+", re.ASCII)  # a topic setting's key
PROPERTY_KEY = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*", re.ASCII)  # a broker property (roll --set)
KAFKA_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+", re.ASCII)  # a Kafka release, X.Y.Z
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
CLUSTER_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", re.ASCII)  # a KRaft cluster id: 16 bytes, base64url
REGISTRY = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?", re.ASCII)
# [registry[:port]/]path[:tag][@digest], lower-case path: Docker's own reference grammar, compacted
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE = re.compile(
    rf"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?",
    re.ASCII,
)
_UNPRINTABLE = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")  # control, format, line/paragraph separators, unassigned


def shown(text: str, limit: int = 80) -> str:
    """User text as an error shows it: quoted, control characters escaped (a NUL visible, a newline not splitting
    the line), long text cut."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def escaped(message: str) -> str:
    """A whole message on one line: each control character as its escape (\\n, \\x00), the rest as it is."""
    if not any(_unprintable(char) for char in message):
        return message
    return "".join(repr(char)[1:-1] if _unprintable(char) else char for char in message)


def _unprintable(char: str) -> bool:
    return unicodedata.category(char) in _UNPRINTABLE


def _checked(pattern: re.Pattern[str], name: str, what: str, hint: str, problem: str = "is not valid") -> str:
    if not pattern.fullmatch(name):
        raise SpecError(f"{what} {shown(name)} {problem}", hint=hint)
    return name


def text(value: str, what: str, maximum: int = 4096) -> str:
    """Free text (a label's value, a command, a setting's value): no control character, at most ``maximum`` long."""
    if any(_unprintable(char) for char in value):
        raise SpecError(f"{what} {shown(value)} holds a control character", hint="remove it: no newline, tab or NUL")
    if len(value) > maximum:
        raise SpecError(f"{what} is {len(value)} characters long", hint=f"use at most {maximum}")
    return value


def given(value: str, what: str) -> str:
    """A value an option gives (a URL, an address, an endpoint): not empty (never "not given"), no control character."""
    if not value:
        raise SpecError(f"{what} is empty", hint=f"leave {what} out for the default, or give a value")
    return text(value, what)


def stack_name(name: str, what: str = "stack name") -> str:
    hint = f"use 1-{STACK_MAX} lower-case letters, digits, '-' and '_', starting with a letter or digit"
    return _checked(STACK_NAME, name, what, hint)


def sandbox_name(name: str) -> str:
    return _checked(SANDBOX_NAME, name, "sandbox name", "use 1-6 lower-case letters or digits, e.g. sk")


def sandbox_prefix(prefix: str) -> str:
    return _checked(SANDBOX_PREFIX, prefix, "host prefix", "use lower-case letters, digits and '-'")


def user_name(name: str) -> str:
    return _checked(USER_NAME, name, "user name", "use 1-64 letters, digits, '.', '_' and '-'")


def host_name(name: str) -> str:
    return _checked(HOST_NAME, name, "host name", "use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")


def dns_name(name: str) -> bool:
    """A DNS name (labels of letters, digits and '-'; not all digits: 10.0.0.300 is a typo, not a name)."""
    labels = name.removesuffix(".").split(".")
    if all(label.isascii() and label.isdigit() for label in labels):
        return False
    return len(name) <= 253 and all(DNS_LABEL.fullmatch(label) for label in labels)


def zone_name(zone: str) -> str:
    return _checked(ZONE_NAME, zone, "zone", "a zone is letters, digits, '.', '_' or '-', e.g. eu-west-1a")


def label(key: str, value: str) -> tuple[str, str]:
    """A user's node label: a Docker label key outside swarmkit's own namespace, a value without control characters."""
    _checked(LABEL_KEY, key, "label", "use letters, digits, '.', '_', '/' and '-', e.g. zone or com.example.tier")
    if key.lower() == RESERVED_LABELS[:-1] or key.lower().startswith(RESERVED_LABELS):
        raise SpecError(
            f"label {shown(key)} is in swarmkit's own namespace ({RESERVED_LABELS}*)",
            hint="swarmkit keeps broker ids, host names and cluster ids there: choose another name, e.g. zone or app.role",
        )
    text(value, f"label {key}", LABEL_VALUE_MAX)
    return key, value


def topic_name(name: str, what: str = "topic name", existing: bool = False) -> str:
    """A topic a user may create: Kafka's own rules (characters, length, '.' and '..'), and none of Kafka's names;
    ``existing``: a topic to act on, Kafka's own included (rebalance __consumer_offsets)."""
    if not name:
        raise SpecError(f"{what} is empty", hint="start each spec with the topic's name")
    if len(name) > TOPIC_MAX:
        raise SpecError(f"{what} {shown(name, 40)} is {len(name)} characters long", hint=f"Kafka allows at most {TOPIC_MAX}")
    if name in (".", ".."):
        raise SpecError(f"{what} {shown(name)} is not a legal topic name", hint="Kafka forbids '.' and '..' as names")
    if not TOPIC_NAME.fullmatch(name):
        bad = "".join(sorted({c for c in name if not TOPIC_NAME.fullmatch(c)}))
        raise SpecError(
            f"{what} {shown(name)} contains illegal characters {bad!r}",
            hint="Kafka topic names may use only letters, digits, '.', '_' and '-'",
        )
    if name.startswith(INTERNAL_TOPICS) and not existing:
        raise SpecError(
            f"{what} {shown(name)} is named like Kafka's internal topics (__consumer_offsets, __transaction_state)",
            hint="Kafka keeps names starting with '__' for itself: choose another name",
        )
    return name


def setting_key(key: str, what: str = "setting") -> str:
    return _checked(SETTING_KEY, key, what, "write settings as key=value, e.g. retention.ms=86400000")


def property_key(key: str) -> str:
    return _checked(PROPERTY_KEY, key, "Kafka property", "write it as key=value, e.g. log.retention.hours=48")


def env_name(name: str) -> str:
    return _checked(ENV_NAME, name, "environment variable", "use letters, digits and '_', not starting with a digit")


def cluster_id(value: str) -> str:
    hint = "a KRaft cluster id is 22 characters of base64url (A-Z a-z 0-9 _ -), e.g. from kafka-storage.sh random-uuid"
    return _checked(CLUSTER_ID, value, "cluster id", hint, problem="is not a KRaft cluster id")


def registry(address: str) -> str:
    """A registry's HOST[:PORT], as an image reference starts with it."""
    _checked(REGISTRY, address, "registry", "give HOST:PORT, e.g. 10.0.0.5:5000")
    port = address.rpartition(":")[2] if ":" in address else "443"
    if not 1 <= int(port) <= 65535:
        raise SpecError(f"registry {shown(address)}: port {port} is not 1-65535", hint="give HOST:PORT, e.g. 10.0.0.5:5000")
    return address


def image_ref(image: str) -> str:
    hint = "e.g. apache/kafka:4.4.0 or registry:5000/kafka:4.4.0"
    return _checked(IMAGE, image, "image", hint, problem="is not a valid image reference")
