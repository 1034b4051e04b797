"""The Helm chart: `helm lint` passes and `helm template` renders what the design needs.

helm comes from deploy/local/helm.sh (built once from the Go module proxy into .stack/bin).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pareis.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "pareis"
ROLES = ["assertions", "effects", "incidents", "lineage", "scores"]
SENTINEL = "s3cr3t-sentinel-value"


@pytest.fixture(scope="module")
def helm() -> str:
    done = subprocess.run(
        [str(ROOT / "deploy" / "local" / "helm.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def render(helm: str, tmp_path: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    args = [helm, "template", "rel", str(CHART), "--namespace", "ml"]
    if values is not None:
        file = tmp_path / "values.yaml"
        file.write_text(yaml.safe_dump(values))
        args += ["-f", str(file)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def of_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}


def test_chart_lints(helm: str) -> None:
    done = subprocess.run([helm, "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_deployment_per_role_running_that_role_with_probes_wired(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path)
    deployments = of_kind(docs, "Deployment")
    assert sorted(deployments) == [f"rel-pareis-{role}" for role in ROLES]
    for role in ROLES:
        spec = deployments[f"rel-pareis-{role}"]["spec"]
        assert spec["selector"]["matchLabels"]["app.kubernetes.io/component"] == role
        assert "replicas" not in spec, "the HPA owns the replica count"
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["args"] == ["run", role]
        port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
        env = {e["name"]: e for e in container["env"]}
        assert env["PAREIS_CONFIG_FILE"]["value"] == "/etc/pareis/config.yaml"
        assert env["PAREIS_RUNTIME__INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
        assert container["envFrom"] == [{"secretRef": {"name": "rel-pareis"}}]
        assert pod["terminationGracePeriodSeconds"] > 25
        assert spec["template"]["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    config = yaml.safe_load(of_kind(docs, "ConfigMap")["rel-pareis"]["data"]["config.yaml"])
    assert config["runtime"]["http_port"] == port


def test_the_configmap_is_valid_settings(helm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = of_kind(render(helm, tmp_path), "ConfigMap")["rel-pareis"]["data"]["config.yaml"]
    file = tmp_path / "config.yaml"
    file.write_text(config)
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(file))
    settings = load_settings()  # extra="forbid": an unknown key fails here
    assert settings.kafka.bootstrap_servers == "kafka:9092"
    assert settings.kafka.schema_registry_url is None
    assert settings.runtime.shutdown_grace_s == 25.0


def test_no_secret_in_a_configmap(helm: str, tmp_path: Path) -> None:
    secrets = {"PAREIS_DATAHUB__TOKEN": SENTINEL, "PAREIS_REDIS_URL": f"redis://:{SENTINEL}@redis:6379/0"}
    docs = render(helm, tmp_path, {"secrets": {"env": secrets}})
    for name, configmap in of_kind(docs, "ConfigMap").items():
        assert SENTINEL not in yaml.safe_dump(configmap), f"a secret leaked into ConfigMap {name}"
        text = configmap["data"]["config.yaml"].lower()
        assert "token" not in text and "password" not in text
    for doc in docs:
        if doc["kind"] != "Secret":
            assert SENTINEL not in yaml.safe_dump(doc), f"a secret leaked into {doc['kind']} {doc['metadata']['name']}"
    assert of_kind(docs, "Secret")["rel-pareis"]["stringData"] == secrets


def test_an_existing_secret_replaces_the_chart_secret(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"secrets": {"create": False, "existingSecret": "pareis-creds"}})
    assert of_kind(docs, "Secret") == {}
    for deployment in of_kind(docs, "Deployment").values():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["envFrom"] == [{"secretRef": {"name": "pareis-creds"}}]


HOOK = {
    "helm.sh/hook": "pre-install,pre-upgrade",
    "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
}


def test_a_pre_install_job_creates_the_topics_pareis_owns_before_any_role(
    helm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: `pareis topics create` as a pre-install/pre-upgrade hook, with the configured partitions,
    replication and configs. Hooks run before the release's objects exist: it brings its own settings and
    credentials (deleted once it succeeded) and runs as an account that exists."""
    secrets = {"PAREIS_REDIS_URL": "redis://redis:6379/0", "PAREIS_KAFKA__PROPERTIES": '{"sasl.password": "x"}'}
    values = {"config": {"kafka": {"topic_partitions": 12, "replication_factor": 3}}, "secrets": {"env": secrets}}
    docs = render(helm, tmp_path, values)
    job = of_kind(docs, "Job")["rel-pareis-topics"]
    assert {k: v for k, v in job["metadata"]["annotations"].items() if k in HOOK} == HOOK
    assert job["metadata"]["annotations"]["helm.sh/hook-weight"] == "0"
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["topics", "create"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "default"
    assert pod["automountServiceAccountToken"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True and pod["securityContext"]["runAsNonRoot"]
    assert container["envFrom"] == [{"secretRef": {"name": "rel-pareis-topics"}}]
    copy = of_kind(docs, "Secret")["rel-pareis-topics"]
    assert copy["stringData"] == of_kind(docs, "Secret")["rel-pareis"]["stringData"] == secrets
    configmap = of_kind(docs, "ConfigMap")["rel-pareis-topics"]
    for hooked in (copy, configmap):
        assert hooked["metadata"]["annotations"]["helm.sh/hook-weight"] == "-5", "before the Job"
    assert {"name": "config", "configMap": {"name": "rel-pareis-topics"}} in pod["volumes"]
    file = tmp_path / "config.yaml"
    file.write_text(configmap["data"]["config.yaml"])
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(file))
    kafka = load_settings().kafka
    assert (kafka.topic_partitions, kafka.replication_factor, kafka.create_topics) == (12, 3, True)
    assert kafka.topics.gate == "pareis.gate.v1" and kafka.topic_configs["gate"] == {"cleanup.policy": "compact"}


def test_the_topics_job_takes_an_existing_secret_and_can_be_turned_off(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"secrets": {"create": False, "existingSecret": "pareis-creds"}})
    (container,) = of_kind(docs, "Job")["rel-pareis-topics"]["spec"]["template"]["spec"]["containers"]
    assert container["envFrom"] == [{"secretRef": {"name": "pareis-creds"}}]
    docs = render(helm, tmp_path, {"topics": {"create": False}})
    assert of_kind(docs, "Job") == {} and "rel-pareis-topics" not in of_kind(docs, "ConfigMap")


def test_hpa_per_role_on_consumer_lag_and_a_pdb_per_role(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path)
    hpas = of_kind(docs, "HorizontalPodAutoscaler")
    assert sorted(hpas) == [f"rel-pareis-{role}" for role in ROLES]
    hpa = hpas["rel-pareis-lineage"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "rel-pareis-lineage"}
    (metric,) = hpa["metrics"]
    assert metric["type"] == "External"
    selector = {"matchLabels": {"role": "lineage"}}
    assert metric["external"]["metric"] == {"name": "pareis_consumer_lag", "selector": selector}
    assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "1000"}
    assert hpas["rel-pareis-effects"]["spec"]["metrics"][0]["external"]["target"]["averageValue"] == "100"
    # The scores role (DESIGN §1, issue 35) scales on its own group's lag on the signals topic.
    scores = hpas["rel-pareis-scores"]["spec"]
    assert scores["scaleTargetRef"]["name"] == "rel-pareis-scores"
    assert scores["metrics"][0]["external"]["metric"]["selector"] == {"matchLabels": {"role": "scores"}}
    pdbs = of_kind(docs, "PodDisruptionBudget")
    assert sorted(pdbs) == [f"rel-pareis-{role}" for role in ROLES]
    assert pdbs["rel-pareis-lineage"]["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "lineage"


def test_keda_scaled_objects_replace_the_hpas(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"keda": {"enabled": True}})
    assert of_kind(docs, "HorizontalPodAutoscaler") == {}
    scaled = of_kind(docs, "ScaledObject")
    assert sorted(scaled) == [f"rel-pareis-{role}" for role in ROLES]
    (trigger,) = scaled["rel-pareis-incidents"]["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["consumerGroup"] == "pareis-incidents"
    assert trigger["metadata"]["topic"] == "pareis.signals.v1"
    (trigger,) = scaled["rel-pareis-scores"]["spec"]["triggers"]
    scores = trigger["metadata"]
    assert (scores["consumerGroup"], scores["topic"]) == ("pareis-scores", "pareis.signals.v1")
    lineage = scaled["rel-pareis-lineage"]["spec"]["triggers"][0]["metadata"]
    assert lineage["topic"] == "MetadataChangeLog_Versioned_v1"


def test_disabled_roles_render_nothing_and_fixed_replicas_without_autoscaling(helm: str, tmp_path: Path) -> None:
    values = {
        "roles": {
            "assertions": {"enabled": False},
            "effects": {"enabled": False},
            "incidents": {"enabled": False},
            "scores": {"enabled": False},
        },
        "roleDefaults": {"replicas": 3, "autoscaling": {"enabled": False}, "podDisruptionBudget": {"enabled": False}},
    }
    docs = render(helm, tmp_path, values)
    deployments = of_kind(docs, "Deployment")
    assert list(deployments) == ["rel-pareis-lineage"]
    assert deployments["rel-pareis-lineage"]["spec"]["replicas"] == 3
    assert of_kind(docs, "HorizontalPodAutoscaler") == {} and of_kind(docs, "PodDisruptionBudget") == {}


def test_a_grace_period_shorter_than_the_shutdown_grace_is_refused(helm: str, tmp_path: Path) -> None:
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump({"terminationGracePeriodSeconds": 20}))
    done = subprocess.run(
        [helm, "template", "rel", str(CHART), "-f", str(file)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "shutdown_grace_s" in done.stderr


def test_mission_control_is_off_by_default(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path)
    assert "rel-pareis-serve" not in of_kind(docs, "Deployment") and of_kind(docs, "Service") == {}


def test_mission_control_deployment_and_service_with_the_roles_probes_and_security(helm: str, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"serve": {"enabled": True, "auth": {"token": SENTINEL}}})
    deployments = of_kind(docs, "Deployment")
    serve, lineage = deployments["rel-pareis-serve"]["spec"], deployments["rel-pareis-lineage"]["spec"]
    pod, role_pod = serve["template"]["spec"], lineage["template"]["spec"]
    (container,) = pod["containers"]
    (role,) = role_pod["containers"]
    assert container["args"][:2] == ["serve", "--redis"] and "--token-file" in container["args"]
    assert container["args"][container["args"].index("--host") + 1] == "0.0.0.0"
    token_file = container["args"][container["args"].index("--token-file") + 1]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert token_file == f"{mounts['token']}/token"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["token"]["secret"]["secretName"] == "rel-pareis-serve"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == role[probe]["httpGet"]
    assert (
        container["securityContext"] == role["securityContext"]
        and pod["securityContext"] == role_pod["securityContext"]
    )
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert port == 9420 and str(port) in container["args"]
    service = of_kind(docs, "Service")["rel-pareis-serve"]["spec"]
    assert service["selector"]["app.kubernetes.io/component"] == "serve"
    assert service["ports"] == [{"name": "http", "port": 9420, "targetPort": "http", "protocol": "TCP"}]
    assert of_kind(docs, "Secret")["rel-pareis-serve"]["stringData"] == {"token": SENTINEL}
    for doc in docs:
        if doc["kind"] != "Secret":
            assert SENTINEL not in yaml.safe_dump(doc)


def test_mission_control_needs_a_token_and_takes_an_existing_secret(helm: str, tmp_path: Path) -> None:
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump({"serve": {"enabled": True}}))
    done = subprocess.run(
        [helm, "template", "rel", str(CHART), "-f", str(file)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "serve.auth.token" in done.stderr
    docs = render(helm, tmp_path, {"serve": {"enabled": True, "auth": {"existingSecret": "mc-token"}}})
    assert "rel-pareis-serve" not in of_kind(docs, "Secret")
    pod = of_kind(docs, "Deployment")["rel-pareis-serve"]["spec"]["template"]["spec"]
    assert {v["name"]: v for v in pod["volumes"]}["token"]["secret"]["secretName"] == "mc-token"


def test_pods_carry_no_hash_of_the_secret_values_and_roll_on_a_revision_bump(helm: str, tmp_path: Path) -> None:
    def pod_annotations(values: dict[str, Any]) -> list[dict[str, str]]:
        docs = render(helm, tmp_path, values)
        return [d["spec"]["template"]["metadata"].get("annotations", {}) for d in of_kind(docs, "Deployment").values()]

    one = {"secrets": {"env": {"PAREIS_REDIS_URL": "redis://:pw1@redis:6379/0"}}, "serve": {"enabled": True,
           "auth": {"token": "t"}}}  # fmt: skip
    other = {**one, "secrets": {"env": {"PAREIS_REDIS_URL": "redis://:pw2@redis:6379/0"}}}
    assert pod_annotations(one) == pod_annotations(other), "nothing on the pods depends on the secret values"
    assert not any(k.startswith("checksum/secret") for a in pod_annotations(one) for k in a)
    bumped = pod_annotations({**one, "secrets": {**one["secrets"], "revision": "2"}})
    assert {a["pareis.io/secret-revision"] for a in bumped} == {"2"}


def test_a_network_policy_admits_only_the_http_ports(helm: str, tmp_path: Path) -> None:
    (policy,) = of_kind(render(helm, tmp_path), "NetworkPolicy").values()
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 9400}] and "from" not in rule
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    scoped = render(helm, tmp_path, {"networkPolicy": {"ingressFrom": [{"namespaceSelector": {}}],
                                                       "egress": [{"ports": [{"port": 9092}]}]}})  # fmt: skip
    (policy,) = of_kind(scoped, "NetworkPolicy").values()
    assert policy["spec"]["ingress"][0]["from"] == [{"namespaceSelector": {}}]
    assert policy["spec"]["egress"] == [{"ports": [{"port": 9092}]}] and "Egress" in policy["spec"]["policyTypes"]
    assert not of_kind(render(helm, tmp_path, {"networkPolicy": {"enabled": False}}), "NetworkPolicy")


def test_redis_cluster_replica_acknowledgements_and_persistence_render(
    helm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart asks every role for a replica's acknowledgement before each commit and for an append-only file, and
    a cluster URL reaches the roles as it is (issue 34)."""
    url = "rediss+cluster://:pw@redis-cluster:6379"
    docs = render(helm, tmp_path, {"secrets": {"env": {"PAREIS_REDIS_URL": url}}})
    config = of_kind(docs, "ConfigMap")["rel-pareis"]
    secret = of_kind(docs, "Secret")["rel-pareis"]
    assert secret["stringData"]["PAREIS_REDIS_URL"] == url
    path = tmp_path / "config.yaml"
    path.write_text(config["data"]["config.yaml"])
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(path))
    monkeypatch.setenv("PAREIS_REDIS_URL", url)
    settings = load_settings()
    assert settings.redis_url == url
    assert settings.redis.replicas == 1 and settings.redis.require_persistence
