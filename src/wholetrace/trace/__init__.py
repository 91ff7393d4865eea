"""The read side: flat tables of a recording, the decoder over its streams, and the `Trace` object."""
