"""The recipe workflow: recipes and their forms, splicing, debug stages, scaffolding,
porting and aligning variants, families, the build hook, the corpus, verify."""
