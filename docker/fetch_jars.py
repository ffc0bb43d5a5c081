"""Image build step: put Spark's Kafka connector into pyspark's jars folder, so format("kafka") works offline.

Run once by docker/Dockerfile (never at lab run time). Each jar is checked against the .sha1 file that Maven
Central publishes beside it, and against a sha256 too when one is given (--sha256 ARTIFACT=HEX). Before
downloading, the versions asked for are compared with what the connector's own published POM declares, so a
kafka-clients or commons-pool2 version that does not match the Spark release fails the build instead of
shipping a mismatched client.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CENTRAL = "https://repo1.maven.org/maven2"
CONNECTOR_CLASS = "org/apache/spark/sql/kafka010/KafkaSourceProvider.class"


class FetchError(Exception):
    """A download or a check failed; the message says which artifact and what to change."""


def artifacts(spark: str, scala: str, kafka: str, pool2: str) -> list[tuple[str, str, str]]:
    """(group, artifact, version) of every jar the connector needs beyond what pyspark ships."""
    return [
        ("org.apache.spark", f"spark-sql-kafka-0-10_{scala}", spark),
        ("org.apache.spark", f"spark-token-provider-kafka-0-10_{scala}", spark),
        ("org.apache.kafka", "kafka-clients", kafka),
        ("org.apache.commons", "commons-pool2", pool2),
    ]


def url(repo: str, group: str, artifact: str, version: str, ext: str = "jar") -> str:
    return f"{repo}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.{ext}"


def parse_sha1(text: str) -> str:
    """The hash in a Maven .sha1 file ('<hex>' or '<hex>  <file name>')."""
    match = re.match(r"\s*([0-9a-fA-F]{40})(?:\s|$)", text)
    if not match:
        raise FetchError(f"not a .sha1 file: {text[:60]!r}")
    return match.group(1).lower()


def verify(data: bytes, name: str, sha1: str, sha256: str | None = None) -> None:
    """Raise FetchError unless data has the given sha1 (and sha256, when given)."""
    found = hashlib.sha1(data).hexdigest()
    if found != sha1.lower():
        raise FetchError(f"{name}: sha1 {found} does not match the published {sha1}; refusing the download")
    if sha256:
        found = hashlib.sha256(data).hexdigest()
        if found != sha256.lower():
            raise FetchError(f"{name}: sha256 {found} does not match the pinned {sha256}; refusing the download")


def pom_property(pom: str, name: str) -> str | None:
    match = re.search(rf"<{re.escape(name)}>\s*([^<\s]+)\s*</{re.escape(name)}>", pom)
    return match.group(1) if match else None


def dependency_version(pom: str, artifact: str, parent_pom: str = "") -> str | None:
    """The version the POM gives the dependency `artifact`, with a ${property} looked up in either POM."""
    for block in re.findall(r"<dependency>(.*?)</dependency>", pom, flags=re.S):
        if re.search(rf"<artifactId>\s*{re.escape(artifact)}\s*</artifactId>", block):
            version = re.search(r"<version>\s*([^<\s]+)\s*</version>", block)
            if not version:
                continue
            value = version.group(1)
            prop = re.fullmatch(r"\$\{(.+)\}", value)
            if prop:
                value = pom_property(pom, prop.group(1)) or pom_property(parent_pom, prop.group(1))
            return value
    return None


def check_versions(connector_pom: str, parent_pom: str, kafka: str, pool2: str) -> None:
    """Raise FetchError when the build ARGs disagree with the versions the connector declares."""
    for artifact, wanted, arg in (("kafka-clients", kafka, "kafka_clients_version"),
                                  ("commons-pool2", pool2, "commons_pool2_version")):
        declared = dependency_version(connector_pom, artifact, parent_pom)
        if declared is None:
            raise FetchError(f"the connector's POM names no version for {artifact}: check the Spark version")
        if declared != wanted:
            raise FetchError(f"the connector declares {artifact} {declared} but the build asks for {wanted}: "
                             f"set ARG {arg}={declared} in docker/Dockerfile")


def fetch(address: str, attempts: int = 3) -> bytes:
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(address, timeout=60) as response:
                return response.read()
        except (urllib.error.URLError, OSError) as exc:
            if attempt == attempts:
                raise FetchError(f"could not download {address}: {exc}") from None
            time.sleep(2 * attempt)
    raise AssertionError("unreachable")


def fetch_verified(address: str, name: str, sha256: str | None = None) -> bytes:
    data = fetch(address)
    verify(data, name, parse_sha1(fetch(address + ".sha1").decode("ascii", "replace")), sha256)
    return data


def default_dest() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", required=True)
    parser.add_argument("--scala", required=True)
    parser.add_argument("--kafka-clients", required=True)
    parser.add_argument("--commons-pool2", required=True)
    parser.add_argument("--repo", default=CENTRAL)
    parser.add_argument("--dest", type=Path, default=None, help="default: pyspark's jars folder")
    parser.add_argument("--sha256", action="append", default=[], metavar="ARTIFACT=HEX",
                        help="also require this sha256 for ARTIFACT (repeatable)")
    args = parser.parse_args(argv)
    pinned = dict(item.split("=", 1) for item in args.sha256 if item.strip())
    dest = args.dest or default_dest()
    if not dest.is_dir():
        raise FetchError(f"{dest} is not a folder: is pyspark installed?")

    connector = f"spark-sql-kafka-0-10_{args.scala}"
    parent = f"spark-parent_{args.scala}"
    connector_pom = fetch_verified(url(args.repo, "org.apache.spark", connector, args.spark, "pom"),
                                   f"{connector}.pom").decode("utf-8")
    parent_pom = fetch_verified(url(args.repo, "org.apache.spark", parent, args.spark, "pom"),
                                f"{parent}.pom").decode("utf-8")
    check_versions(connector_pom, parent_pom, args.kafka_clients, args.commons_pool2)

    for group, artifact, version in artifacts(args.spark, args.scala, args.kafka_clients, args.commons_pool2):
        name = f"{artifact}-{version}.jar"
        data = fetch_verified(url(args.repo, group, artifact, version), name, pinned.get(artifact))
        part = dest / (name + ".part")
        part.write_bytes(data)
        part.replace(dest / name)
        print(f"{name}: {len(data)} bytes, sha1 {hashlib.sha1(data).hexdigest()}, "
              f"sha256 {hashlib.sha256(data).hexdigest()}")

    import zipfile

    with zipfile.ZipFile(dest / f"{connector}-{args.spark}.jar") as jar:
        if CONNECTOR_CLASS not in jar.namelist():
            raise FetchError(f"{connector}-{args.spark}.jar has no {CONNECTOR_CLASS}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FetchError as exc:
        print(f"fetch_jars: {exc}", file=sys.stderr)
        sys.exit(1)
