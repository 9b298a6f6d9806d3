from trajlint.cli.exit import run

if __name__ == "__main__":
    run()
