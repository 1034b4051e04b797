"""The demo's ML side: training on the feature tables, the MLflow registry, and the metadata a feature store emits."""
