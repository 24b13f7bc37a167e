"""`python -m cogserve.cli`."""


from cogserve.cli.main import main

main()
