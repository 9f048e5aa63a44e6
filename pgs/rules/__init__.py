"""Rules every layer applies: the loss table, argument checks, the defaults and their
"auto" rules, and what input data is accepted and how it is converted."""
