"""SEQUITUR grammars of symbol sequences: build (GrammarBuilder, sequitur), query, store."""

from wholetrace.grammar.builder import GrammarBuilder, sequitur
from wholetrace.grammar.grammar import Grammar

__all__ = ["Grammar", "GrammarBuilder", "sequitur"]
