//! The engine. See ARCHITECTURE.md for the codemap.
