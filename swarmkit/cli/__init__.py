"""The command line: typer commands (thin) and the tables a person reads; nothing below imports it."""
