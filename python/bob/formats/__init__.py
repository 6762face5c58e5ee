"""bob's binary formats: construct schemas, checkers and typed objects."""
