"""The PTX front end: lexicon, grammar, parser, operands, register scopes, the statement
model, the opcode registry, the faithful emitter and its errors."""
