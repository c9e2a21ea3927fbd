"""What a run shows and leaves behind: the run directory, the live table, the final
summary and the scalar logs (TensorBoard, Weights & Biases)."""
