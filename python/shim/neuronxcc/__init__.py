"""neuronxcc resolving to nklab: on PYTHONPATH under `nklab python` only, so a
machine with the Neuron SDK keeps its own."""
