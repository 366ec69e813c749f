"""The offline tuner: search space -> candidates -> compile -> time -> verify -> table file."""
