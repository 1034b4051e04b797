"""DataHub adapters: the change-log codec, aspect translation, file format, writers."""
