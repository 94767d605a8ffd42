"""The compute-node resource tracker agent."""
