console.log("native build: not yet")
