"""The checks of a submission, one module each, run in this order by submissions.validate:
structure, schema, signature, registry, reconstructions, rescore, copies, nearcopies, duplicates."""
