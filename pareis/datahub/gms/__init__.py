"""What DataHub's server does, where none runs or where Pareis reads one: apply, version and log proposals (the
emulator, its PATCH templates and sibling hook), and read a running GMS's current metadata (the snapshot)."""
