"""ocrkit: helpers shared by the OCR models (a team's internal package, imported from outside
the model repository, as a pip-installed helper would be)."""
