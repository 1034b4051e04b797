"""Change-log aspects → lineage index facts (DESIGN §2.1): datasets and columns, ML entities, owners, and the
typed reads of raw aspect JSON they share."""
