console.log("tally");
