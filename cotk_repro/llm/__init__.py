"""Language models as systems: prompt protocols, generation, and the system's identity (docs/llm.md)."""
