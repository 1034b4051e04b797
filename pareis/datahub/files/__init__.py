"""DataHub file-format metadata (the `file` sink's JSON arrays of proposals): read in bounded memory, and read
through acryl-datahub's own reader as the reference."""
