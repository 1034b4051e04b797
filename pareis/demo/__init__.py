"""`pareis demo`: a recorded timeline through every role's real handlers on embedded backends."""
