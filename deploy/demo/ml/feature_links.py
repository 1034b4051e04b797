"""A DataHub ingestion transformer for the MLflow source: links each model version to the features it used.

DataHub's MLflow source emits ``mlModelProperties`` for every registered model version but never
``mlFeatures`` (MLflow has no notion of a feature). The training code (:mod:`ml.train`) records the features of
each version as the model-version tag ``features`` (comma-separated names) and ``feature_namespace``; MLflow's
source copies version tags into ``mlModelProperties.customProperties``, and this transformer turns them into
``mlFeatures`` URNs (``urn:li:mlFeature:(<namespace>,<name>)``) on the same aspect, so the proposal the sink
writes is one whole UPSERT (no PATCH, no read-modify-write). Versions without the tag pass through unchanged.

Recipe use (deploy/demo/recipes/mlflow.yml; ``deploy/demo`` must be importable, e.g. ``PYTHONPATH=deploy/demo``)::

    transformers:
      - type: ml.feature_links.MlflowFeatureLinks
        config: {features_tag: features, namespace_tag: feature_namespace}
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import cast

from datahub.configuration.common import ConfigModel
from datahub.emitter.mce_builder import Aspect, make_ml_feature_urn
from datahub.ingestion.api.common import PipelineContext
from datahub.ingestion.transformer.base_transformer import BaseTransformer, SingleAspectTransformer
from datahub.metadata.schema_classes import MLModelPropertiesClass


class MlflowFeatureLinksConfig(ConfigModel):
    features_tag: str = "features"
    namespace_tag: str = "feature_namespace"
    default_namespace: str = "customer_features"


def feature_urns(names: str, namespace: str) -> list[str]:
    """The mlFeature URNs of a comma-separated list of feature names (blank names dropped, order kept)."""
    return [make_ml_feature_urn(namespace, n.strip()) for n in names.split(",") if n.strip()]


class MlflowFeatureLinks(BaseTransformer, SingleAspectTransformer):
    """Sets ``mlModelProperties.mlFeatures`` from the version's ``features`` tag (kept in customProperties)."""

    def __init__(self, config: MlflowFeatureLinksConfig, ctx: PipelineContext) -> None:
        super().__init__()
        self.config = config
        self.ctx = ctx

    @classmethod
    def create(cls, config_dict: dict, ctx: PipelineContext) -> MlflowFeatureLinks:
        return cls(MlflowFeatureLinksConfig.model_validate(config_dict or {}), ctx)

    def entity_types(self) -> list[str]:
        return ["mlModel"]

    def aspect_name(self) -> str:
        return "mlModelProperties"

    def transform_aspect(self, entity_urn: str, aspect_name: str, aspect: Aspect | None) -> Aspect | None:
        if not isinstance(aspect, MLModelPropertiesClass):
            return aspect
        props = aspect.customProperties or {}
        names = props.get(self.config.features_tag)
        if not names:
            return aspect
        out = copy.deepcopy(aspect)
        namespace = props.get(self.config.namespace_tag) or self.config.default_namespace
        known: Iterable[str] = out.mlFeatures or []
        out.mlFeatures = list(dict.fromkeys([*known, *feature_urns(names, namespace)]))
        return cast(Aspect, out)
